// Package decisions answers the decision queries can, should and next: read-only advice on a contract thread's next step, judged by the domain on one read of the thread, never a grant.
package decisions
