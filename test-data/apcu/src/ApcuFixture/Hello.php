<?php
namespace ApcuFixture;

// Loaded through Composer's ClassLoader with an APCu prefix (test-data/apcu/lib.php).
class Hello
{
    public function hi(): string
    {
        return 'hi from ApcuFixture';
    }
}
