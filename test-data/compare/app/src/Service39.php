<?php
namespace App;

final class Service39
{
    public function __construct(private int $seed = 39) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service39', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
