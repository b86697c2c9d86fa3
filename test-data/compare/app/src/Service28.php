<?php
namespace App;

final class Service28
{
    public function __construct(private int $seed = 28) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service28', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
