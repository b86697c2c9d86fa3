<?php
namespace App;

final class Service48
{
    public function __construct(private int $seed = 48) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service48', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
