<?php
namespace App;

final class Service06
{
    public function __construct(private int $seed = 6) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service06', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
