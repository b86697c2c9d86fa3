<?php
namespace App;

final class Service30
{
    public function __construct(private int $seed = 30) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service30', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
