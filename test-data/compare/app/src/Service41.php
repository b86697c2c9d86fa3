<?php
namespace App;

final class Service41
{
    public function __construct(private int $seed = 41) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service41', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
