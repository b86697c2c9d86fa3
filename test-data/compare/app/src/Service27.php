<?php
namespace App;

final class Service27
{
    public function __construct(private int $seed = 27) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service27', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
