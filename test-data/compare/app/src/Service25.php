<?php
namespace App;

final class Service25
{
    public function __construct(private int $seed = 25) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service25', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
