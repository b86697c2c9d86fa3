<?php
namespace App;

final class Service20
{
    public function __construct(private int $seed = 20) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service20', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
