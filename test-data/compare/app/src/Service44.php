<?php
namespace App;

final class Service44
{
    public function __construct(private int $seed = 44) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service44', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
