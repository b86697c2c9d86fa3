<?php
namespace App;

final class Service23
{
    public function __construct(private int $seed = 23) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service23', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
