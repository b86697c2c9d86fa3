<?php
namespace App;

final class Service33
{
    public function __construct(private int $seed = 33) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service33', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
