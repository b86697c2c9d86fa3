<?php
namespace App;

final class Service29
{
    public function __construct(private int $seed = 29) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service29', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
