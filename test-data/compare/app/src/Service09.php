<?php
namespace App;

final class Service09
{
    public function __construct(private int $seed = 9) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service09', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
