<?php
namespace App;

final class Service22
{
    public function __construct(private int $seed = 22) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service22', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
