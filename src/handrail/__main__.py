from handrail.entry import main

raise SystemExit(main())
