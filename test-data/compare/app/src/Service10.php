<?php
namespace App;

final class Service10
{
    public function __construct(private int $seed = 10) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service10', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
