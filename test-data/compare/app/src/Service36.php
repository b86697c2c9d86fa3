<?php
namespace App;

final class Service36
{
    public function __construct(private int $seed = 36) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service36', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
