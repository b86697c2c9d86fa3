<?php
namespace App;

final class Service40
{
    public function __construct(private int $seed = 40) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service40', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
