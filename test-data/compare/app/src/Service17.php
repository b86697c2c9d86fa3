<?php
namespace App;

final class Service17
{
    public function __construct(private int $seed = 17) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service17', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
