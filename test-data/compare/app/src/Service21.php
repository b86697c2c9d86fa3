<?php
namespace App;

final class Service21
{
    public function __construct(private int $seed = 21) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service21', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
