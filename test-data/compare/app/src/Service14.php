<?php
namespace App;

final class Service14
{
    public function __construct(private int $seed = 14) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service14', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
