<?php
namespace App;

final class Service11
{
    public function __construct(private int $seed = 11) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service11', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
