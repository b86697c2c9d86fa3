<?php
namespace App;

final class Service37
{
    public function __construct(private int $seed = 37) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service37', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
