<?php
namespace App;

final class Service13
{
    public function __construct(private int $seed = 13) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service13', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
