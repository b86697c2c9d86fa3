<?php
namespace App;

final class Service05
{
    public function __construct(private int $seed = 5) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service05', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
