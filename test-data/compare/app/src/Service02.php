<?php
namespace App;

final class Service02
{
    public function __construct(private int $seed = 2) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service02', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
