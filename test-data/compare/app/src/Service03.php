<?php
namespace App;

final class Service03
{
    public function __construct(private int $seed = 3) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service03', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
