<?php

namespace FerrophpTest\Util;

function loaded(): bool
{
    return true;
}
