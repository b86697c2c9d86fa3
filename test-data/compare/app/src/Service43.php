<?php
namespace App;

final class Service43
{
    public function __construct(private int $seed = 43) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service43', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
