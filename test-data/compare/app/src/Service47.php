<?php
namespace App;

final class Service47
{
    public function __construct(private int $seed = 47) {}

    public function describe(array $row): array
    {
        return ['service' => 'Service47', 'id' => $row['id'] * $this->seed, 'label' => ucfirst($row['name'])];
    }
}
