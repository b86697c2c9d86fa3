<?php
namespace App;

final class Service18
{
    public function __construct(private int $seed = 18) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service18', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
