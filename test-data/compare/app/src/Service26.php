<?php
namespace App;

final class Service26
{
    public function __construct(private int $seed = 26) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service26', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
