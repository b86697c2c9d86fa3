<?php
namespace App;

final class Service35
{
    public function __construct(private int $seed = 35) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service35', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
