<?php
namespace App;

final class Service50
{
    public function __construct(private int $seed = 50) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service50', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
