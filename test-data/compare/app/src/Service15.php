<?php
namespace App;

final class Service15
{
    public function __construct(private int $seed = 15) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service15', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
