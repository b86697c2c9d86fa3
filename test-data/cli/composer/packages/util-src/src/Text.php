<?php

namespace FerrophpTest\Util;

final class Text
{
    public static function shout(string $text): string
    {
        return strtoupper($text) . '!';
    }
}
