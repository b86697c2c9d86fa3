<?php
namespace App;

final class Service38
{
    public function __construct(private int $seed = 38) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service38', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
