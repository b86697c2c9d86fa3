<?php

class MyObject
{
    public function __construct(public string $id) {}
}
