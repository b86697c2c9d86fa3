<?php
namespace App;

final class Service42
{
    public function __construct(private int $seed = 42) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service42', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
