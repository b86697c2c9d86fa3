<?php
namespace App;

final class Service34
{
    public function __construct(private int $seed = 34) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service34', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
