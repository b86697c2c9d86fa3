<?php
namespace App;

final class Service24
{
    public function __construct(private int $seed = 24) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service24', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
