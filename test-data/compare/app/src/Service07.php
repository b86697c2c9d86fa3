<?php
namespace App;

final class Service07
{
    public function __construct(private int $seed = 7) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service07', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
