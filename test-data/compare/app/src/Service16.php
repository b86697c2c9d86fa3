<?php
namespace App;

final class Service16
{
    public function __construct(private int $seed = 16) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service16', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
