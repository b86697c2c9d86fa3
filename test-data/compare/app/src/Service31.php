<?php
namespace App;

final class Service31
{
    public function __construct(private int $seed = 31) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service31', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
