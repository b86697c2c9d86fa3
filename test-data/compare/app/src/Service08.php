<?php
namespace App;

final class Service08
{
    public function __construct(private int $seed = 8) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service08', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
