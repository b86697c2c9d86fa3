<?php
namespace App;

final class Service19
{
    public function __construct(private int $seed = 19) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service19', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
