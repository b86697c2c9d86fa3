<?php

namespace App;

use FerrophpTest\Greeter\Greeter;
use FerrophpTest\Util\Text;

final class App
{
    public static function run(): string
    {
        return Text::shout((new Greeter('composer'))->greet());
    }
}
