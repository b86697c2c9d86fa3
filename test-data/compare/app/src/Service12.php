<?php
namespace App;

final class Service12
{
    public function __construct(private int $seed = 12) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service12', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
