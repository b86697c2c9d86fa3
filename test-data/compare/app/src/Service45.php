<?php
namespace App;

final class Service45
{
    public function __construct(private int $seed = 45) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service45', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
