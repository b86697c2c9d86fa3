<?php
namespace App;

final class Service46
{
    public function __construct(private int $seed = 46) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service46', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
