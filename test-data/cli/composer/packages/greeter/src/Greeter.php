<?php

namespace FerrophpTest\Greeter;

final class Greeter
{
    public function __construct(private string $name)
    {
    }

    public function greet(): string
    {
        return "hello, {$this->name}";
    }
}
