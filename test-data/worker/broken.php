<?php
// Fails before reaching the request loop.
throw new LogicException('broken worker boot');
