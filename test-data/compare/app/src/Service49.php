<?php
namespace App;

final class Service49
{
    public function __construct(private int $seed = 49) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service49', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
