<?php
namespace App;

final class Service01
{
    public function __construct(private int $seed = 1) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service01', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
