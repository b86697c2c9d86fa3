<?php
namespace App;

final class Service04
{
    public function __construct(private int $seed = 4) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service04', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
