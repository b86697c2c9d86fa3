<?php
namespace App;

final class Service32
{
    public function __construct(private int $seed = 32) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service32', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
